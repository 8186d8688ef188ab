"""Real brokers as the judge (tests/broker): Kafka 3.9 with ZooKeeper and KRaft, and Kafka 4.x, started by the tests.

Each broker set is a session fixture that runs its broker(s) through every phase at set-up and returns what the
brokers did (tests/broker/runs.py): one broker set runs at a time, none is left running between fixtures, and
the tests compare kafkatool with that evidence. Without Java or Maven the tests skip with one line naming what is
missing; with ``CI=true`` that is a failure (tests/broker/install.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatool.canary.sandbox import KafkaInstall
from tests.broker.install import KAFKA3_VERSION, KAFKA4_VERSION, require
from tests.broker.runs import (
    KraftRun,
    SampleRun,
    UpconvertRun,
    ZooKeeperRun,
    kraft_run,
    sample_run,
    upconvert_run,
    zookeeper_run,
)

BROKER_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if BROKER_DIR in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.broker)


@pytest.fixture(scope="session")
def kafka3() -> KafkaInstall:
    return require(KAFKA3_VERSION)


@pytest.fixture(scope="session")
def kafka4() -> KafkaInstall:
    return require(KAFKA4_VERSION)


@pytest.fixture(scope="session")
def zookeeper39(kafka3: KafkaInstall, tmp_path_factory: pytest.TempPathFactory) -> ZooKeeperRun:
    return zookeeper_run(kafka3, tmp_path_factory.mktemp("zookeeper-3.9"))


@pytest.fixture(scope="session")
def kraft39(kafka3: KafkaInstall, tmp_path_factory: pytest.TempPathFactory) -> KraftRun:
    return kraft_run(kafka3, tmp_path_factory.mktemp("kraft-3.9"))


@pytest.fixture(scope="session")
def sample39(kafka3: KafkaInstall, tmp_path_factory: pytest.TempPathFactory) -> SampleRun:
    return sample_run(kafka3, tmp_path_factory.mktemp("sample-3.9"), v2_only=False)


@pytest.fixture(scope="session")
def sample4(kafka4: KafkaInstall, tmp_path_factory: pytest.TempPathFactory) -> SampleRun:
    return sample_run(kafka4, tmp_path_factory.mktemp("sample-4"), v2_only=True)


@pytest.fixture(scope="session")
def upconverted4(kafka4: KafkaInstall, zookeeper39: ZooKeeperRun,
                 tmp_path_factory: pytest.TempPathFactory) -> UpconvertRun:
    return upconvert_run(kafka4, tmp_path_factory.mktemp("upconvert-4"), zookeeper39.clean)
