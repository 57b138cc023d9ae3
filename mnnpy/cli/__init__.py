"""Console entry points: `mnnpy <command>`. Each module here with a `COMMAND` name is a subcommand."""
