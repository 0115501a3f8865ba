"""atheris target: W&B run logs (.wandb: LevelDB-log framing, CRC-32, Record protobufs)."""

from _harness import main, scratch

from trainproof.parsers import read_run


def target(data: bytes) -> None:
    read_run(scratch("run-fuzz.wandb", data), "wandb")


if __name__ == "__main__":
    main(target)
