"""`python -m iclr25.siu_bioactivity`."""

import sys

from iclr25.siu_bioactivity.cli import main

sys.exit(main())
