import sys

from cvhost._worker import main

sys.exit(main(sys.argv[1:]))
