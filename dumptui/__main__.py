import sys

from dumptui.cli import main

sys.exit(main())
