"""`python -m trainproof` is the console script."""

import sys

from trainproof.cli import main

sys.exit(main())
