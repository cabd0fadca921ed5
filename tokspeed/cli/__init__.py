"""The `tokspeed` command line: one module per verb, registered in ``main.COMMANDS``."""
