"""``python -m ragsight.cli``."""

import sys

from . import main

sys.exit(main())
