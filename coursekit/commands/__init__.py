"""The command-line verbs of ``python -m coursekit``, one module each with ``main(argv)``; ``__main__`` only forwards.

Each takes the course root (``--root``, default the current folder) and, where it makes sense, assignment names
(default: every assignment of the course).
"""
