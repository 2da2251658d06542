"""The pure scheduling core: observations and an explicit now in, decisions out."""
