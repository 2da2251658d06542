"""Gangs: applications, PodGroups, reservations, placeholders, the swap, ordinary pods."""
