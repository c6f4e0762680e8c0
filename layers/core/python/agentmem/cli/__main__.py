"""``python -m agentmem.cli``: the console command, as the ``agentmem`` script runs it."""

import sys

from agentmem.cli import main

if __name__ == "__main__":
    sys.exit(main())
