"""The ``prefixlint`` command installed with the package: the library's command line."""

import sys

from . import _prefixlint


def main() -> None:
    sys.stdout.flush()
    sys.exit(_prefixlint.main(sys.argv))


if __name__ == "__main__":
    main()
