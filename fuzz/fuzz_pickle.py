"""atheris target: the pickle scanner on its own (opcodes are interpreted by trainproof's
own table, never by pickle.loads), with the campaign's node budget."""

from _harness import main

from trainproof.probes.pickle_scan import PickleError, scan_pickle


def target(data: bytes) -> None:
    try:
        scan_pickle(data)
    except PickleError:
        pass  # the scanner's "not a pickle I can read": reported as a corrupt checkpoint


if __name__ == "__main__":
    main(target)
