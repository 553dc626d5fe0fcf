import sys

from mmaprobe.vectors.cli import main

sys.exit(main())
