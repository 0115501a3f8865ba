"""Run by the user's interpreter as a script: imports one module and writes what
happened as JSON to the report file named on the command line. Standalone on
purpose (the user's Python need not have trainproof installed), and plain
enough for any Python 3. Usage: python _import_child.py MODULE REPORT FAULTLOG"""

import faulthandler
import json
import os
import sys
import traceback


def _write(path, record):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(record, fh)
    os.replace(tmp, path)


def _frames(tb):
    return [{"file": f.filename, "line": f.lineno, "function": f.name}
            for f in traceback.extract_tb(tb)]


def main():
    module, report, faultlog = sys.argv[1], sys.argv[2], sys.argv[3]
    # Import the way `python -m` run from the working directory would: the cwd
    # first on sys.path, not this script's own directory.
    sys.path[0] = os.getcwd()
    _write(report, {"phase": "started", "python": sys.version.split()[0],
                    "executable": sys.executable})
    fault = open(faultlog, "w")  # noqa: SIM115 - stays open for faulthandler until os._exit
    faulthandler.enable(file=fault, all_threads=False)
    if hasattr(faulthandler, "register"):  # SIGUSR1 from the parent on timeout: say where it hangs
        import signal

        faulthandler.register(signal.SIGUSR1, file=fault, all_threads=False)
    try:
        __import__(module)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt during import count too
        _write(report, {"phase": "raised", "type": type(exc).__name__,
                        "module": type(exc).__module__, "message": str(exc),
                        "frames": _frames(exc.__traceback__),
                        "cwd": os.getcwd(), "python": sys.version.split()[0]})
        os._exit(0)
    _write(report, {"phase": "imported", "file": getattr(sys.modules.get(module), "__file__", None),
                    "cwd": os.getcwd(), "python": sys.version.split()[0]})
    # Skip interpreter teardown: atexit hooks and thread joins of the imported code
    # are not part of importing it.
    os._exit(0)


if __name__ == "__main__":
    main()
