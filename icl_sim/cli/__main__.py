"""``python -m icl_sim.cli``: the ``icl-sim`` command, as a module (what a distributed launcher's ``-m`` runs)."""
from icl_sim.cli import main

if __name__ == "__main__":
    main()
