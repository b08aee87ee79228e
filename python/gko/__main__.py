"""python -m gko: the library's version and diagnostics report (exit 2 when
the library cannot be loaded, with the reason)."""
import sys

from . import _find_library, diagnostics, library, version


def main():
    try:
        library()
    except (OSError, ImportError) as e:
        print("gko: cannot load the library (%s): %s" % (_find_library(), e), file=sys.stderr)
        print("gko: set GKO_LIBRARY to libgko.so.0's path, or install libgko (make install)",
              file=sys.stderr)
        return 2
    print("gko %s (%s)" % (version(), _find_library()))
    print(diagnostics(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
