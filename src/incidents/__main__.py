import sys

from incidents.cli import main

sys.exit(main())
