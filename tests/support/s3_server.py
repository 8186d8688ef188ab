"""A real S3 server on 127.0.0.1 for the object-storage tests: moto's server mode (``moto[server]`` from PyPI), a
bucket created in it, and the environment pyarrow's S3 filesystem needs to reach it (dummy credentials)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kafkatool.canary.sandbox import free_port

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "kafkatool-test", "AWS_SECRET_ACCESS_KEY": "kafkatool-test",
               "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


@dataclass
class S3Server:
    endpoint: str  # http://127.0.0.1:PORT
    bucket: str

    def filesystem(self):  # -> pyarrow.fs.S3FileSystem
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(endpoint_override=self.endpoint.split("://", 1)[1], scheme="http",
                                 region="us-east-1", access_key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                                 secret_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"], allow_bucket_creation=True)

    def upload(self, local: Path, prefix: str) -> str:
        """Copy a local dir under ``prefix`` in the bucket; its ``s3://`` URL."""
        import pyarrow.fs as pafs

        pafs.copy_files(str(local), f"{self.bucket}/{prefix}", source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=self.filesystem())
        return f"s3://{self.bucket}/{prefix}"


@contextmanager
def s3_server(bucket: str = "kafka-backups") -> Iterator[S3Server]:
    """Start moto's S3 server, create ``bucket``, set the credentials in ``os.environ``; stop it all after."""
    port = free_port()  # below the ephemeral range: no outgoing connection takes it before the server binds it
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto's S3 server did not start") from None
                time.sleep(0.2)
        os.environ.update(CREDENTIALS)
        server = S3Server(f"http://127.0.0.1:{port}", bucket)
        server.filesystem().create_dir(bucket)
        yield server
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
