"""``python -m callbench.cli`` is the ``callbench`` command (as is ``python -m callbench``)."""

from callbench.cli import main

if __name__ == "__main__":
    main()
