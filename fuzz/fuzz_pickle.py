"""atheris target: the pickle scanner on its own (opcodes are interpreted by trainproof's
own table, never by pickle.loads), with the campaign's node budget."""

import contextlib

from _harness import main

from trainproof.probes.pickle_scan import PickleError, scan_pickle


def target(data: bytes) -> None:
    with contextlib.suppress(PickleError):  # "not a pickle I can read": a corrupt checkpoint
        scan_pickle(data)


if __name__ == "__main__":
    main(target)
