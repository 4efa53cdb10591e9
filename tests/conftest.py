import sys
from pathlib import Path

# make tests/contract.py importable as `contract`
sys.path.insert(0, str(Path(__file__).parent))
