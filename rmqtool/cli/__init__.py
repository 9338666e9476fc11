"""The typer command line: parse, call one library function, render."""
