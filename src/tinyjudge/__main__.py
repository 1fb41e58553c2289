"""``python -m tinyjudge``: the same command line as ``tinyjudge``."""

from tinyjudge.cli import main

if __name__ == "__main__":
    main()
