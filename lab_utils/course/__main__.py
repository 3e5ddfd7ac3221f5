import sys

from lab_utils.course import main

sys.exit(main())
