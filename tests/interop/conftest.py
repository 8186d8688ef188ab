"""Interop fixtures. Every test under tests/interop is marked ``interop`` automatically; they fail (never
skip) when kafka-ref cannot be built (tests/support/kafkaref.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interop.corpus import Corpus, make_corpus
from tests.support.kafkaref import KafkaRef

INTEROP_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if INTEROP_DIR in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.interop)


@pytest.fixture(scope="session")
def corpus(kafka_ref: KafkaRef, tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """Kafka-written segments and Kafka's reading of them, made once per session."""
    return make_corpus(kafka_ref, tmp_path_factory.mktemp("kafka-corpus"))
