"""The kafkatool CLI: one Typer module per subcommand, thin: parse, call the library, render."""
