"""``python -m callbench`` is the ``callbench`` command."""

from callbench.cli import main

if __name__ == "__main__":
    main()
