import sys

from orig_local.cli import main

sys.exit(main())
