"""What the scheduler keeps between and within cycles: the session, records, ledgers, queues."""
