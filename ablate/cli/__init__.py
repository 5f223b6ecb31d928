"""The command line's sub-commands; ``ablate/__main__.py`` only dispatches to them.

help.py (--help, --info, --cfg job), guard.py (plans refused before Ray starts), train_cmd.py (mode=train),
sweep_cmd.py (the default mode), report_cmd.py (``report RUN_DIR`` and mode=report).
"""
