"""``python -m icl_sim``: the ``icl-sim`` command, for an environment whose scripts are not on PATH."""
from icl_sim.cli import main

if __name__ == "__main__":
    main()
