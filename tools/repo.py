"""The repository's root folder (ROOT), for the tests and tools that read the lab's files."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
