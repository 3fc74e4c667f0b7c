"""``python -m kiln.aot PACKAGE --arch ... -o BUNDLE``."""

import sys

from . import main

sys.exit(main())
