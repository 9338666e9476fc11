"""The typer command line: parse, call one library function, render (`app.main` is the console script).

A signal while its modules load is answered by the handlers `rmqtool/__init__.py` installs first; `app.main`
hands SIGINT back to Python (a KeyboardInterrupt the command cleans up after) when it starts."""
