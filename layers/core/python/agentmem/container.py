"""Wiring: build the adapters the settings ask for, once, on first use (never at import time)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from agentmem.clock import utc_now
from agentmem.errors import NotFound
from agentmem.settings import Settings, get_settings

if TYPE_CHECKING:
    # Services and adapters are imported when first built, not when a handler module is imported.
    from agentmem.agentcore.control import MemoryControl
    from agentmem.agentcore.learning import LearnedRecords
    from agentmem.agentcore.service import AgentCoreService
    from agentmem.deletion.runners import DeletionRunner
    from agentmem.deletion.service import DeletionService
    from agentmem.embeddings.port import Embedder
    from agentmem.extraction.config import AppMemories
    from agentmem.extraction.runner import LocalRunner, Steps
    from agentmem.extraction.service import ExtractionService
    from agentmem.graph.service import GraphMemoryService
    from agentmem.idempotency import IdempotencyStore
    from agentmem.keys import Scope, UserRef
    from agentmem.llm.port import ChatModel
    from agentmem.memory.service import MemoryService
    from agentmem.search.snapshots import LocalSnapshotter, SnapshotStore, Snapshotter
    from agentmem.store.service import StoreService
    from agentmem.stores.table import Item, Table
    from agentmem.tenancy.admission import Admission
    from agentmem.tenancy.keys import TenantService
    from agentmem.vectors.exact import ExactVectorIndex
    from agentmem.vectors.port import VectorIndex


class Container:
    """Each part is built from the settings on first use, unless given here (the local server's table,
    tests' adapters and doubles: anything that implements the part's port)."""

    def __init__(
        self,
        settings: Settings,
        *,
        table: Table | None = None,
        embedder: Embedder | None = None,
        vector_index: VectorIndex | None = None,
        deletion: DeletionService | None = None,
        deletion_runner: DeletionRunner | None = None,
        model: ChatModel | None = None,
        background: bool = True,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """``background``: whether work this process runs later (extraction) runs in a thread of its own, or
        only when asked (``local_extraction.drain()``: tests); ``clock``: the time extraction reads (its
        triggers and retries)."""
        self.settings = settings
        self.background = background
        self.clock = clock
        given = {
            "table": table,
            "embedder": embedder,
            "vector_index": vector_index,
            "deletion": deletion,
            "deletion_runner": deletion_runner,
            "model": model,
        }
        # A cached_property reads its value from the instance dict: a given part is never built.
        self.__dict__.update({name: part for name, part in given.items() if part is not None})

    @cached_property
    def table(self) -> Table:
        if self.settings.store == "dynamodb":
            from agentmem.stores.dynamo_table import DynamoTable

            return DynamoTable(
                self.settings.table_name,
                endpoint_url=self.settings.dynamodb_endpoint_url,
                region_name=self.settings.aws_region,
            )
        from agentmem.stores.sqlite_table import SqliteTable

        return SqliteTable(self.settings.sqlite_path)

    @cached_property
    def embedder(self) -> Embedder | None:
        kind = self.settings.embedder
        if kind == "hashing":
            from agentmem.embeddings.hashing import HashingEmbedder

            return HashingEmbedder(self.settings.embedding_dimension or 384)
        if kind == "local":
            from agentmem.embeddings.local import LocalEmbedder

            return LocalEmbedder(engine=self.settings.embedding_engine)
        if kind == "bedrock":
            from agentmem.embeddings.bedrock import BedrockEmbedder

            return self._shared(
                BedrockEmbedder(
                    model=self.settings.bedrock_model_id,
                    dimension=self.settings.embedding_dimension or 1024,
                    region_name=self.settings.aws_region,
                )
            )
        if kind == "openai":
            from agentmem.embeddings.openai_compatible import OpenAICompatibleEmbedder

            if not (self.settings.embedder_url and self.settings.embedder_model):
                raise ValueError("MEMORY_EMBEDDER=openai needs MEMORY_EMBEDDER_URL and MEMORY_EMBEDDER_MODEL")
            return self._shared(
                OpenAICompatibleEmbedder(
                    self.settings.embedder_url,
                    self.settings.embedder_model,
                    api_key=self.settings.embedder_key(),
                    dimensions=self.settings.embedder_dimensions,
                    timeout_seconds=self.settings.embedder_timeout_seconds,
                    batch_size=self.settings.embedder_batch_size,
                )
            )
        return None

    def _shared(self, embedder: Embedder) -> Embedder:
        """A paid embedder, each tenant's calls a minute counted when MEMORY_EMBEDDING_SHARES sets shares."""
        from agentmem.tenancy.admission import ModelShare, SharedEmbedder, TierLimits

        shares = TierLimits.parse(self.settings.embedding_shares, "MEMORY_EMBEDDING_SHARES")
        if shares is None:
            return embedder
        return SharedEmbedder(embedder, ModelShare(self.table, "embeddings", shares, clock=self._epoch_seconds))

    @cached_property
    def model(self) -> ChatModel | None:
        """The chat model extraction asks, or None (MEMORY_MODEL=none); building it makes no call."""
        kind = self.settings.model
        if kind == "bedrock":
            from agentmem.llm.bedrock import BedrockChatModel

            return BedrockChatModel(
                self.settings.model_id,
                region_name=self.settings.aws_region,
                timeout_seconds=self.settings.model_timeout_seconds,
            )
        if kind == "openai":
            from agentmem.llm.openai_compatible import OpenAICompatibleChatModel

            if not self.settings.model_url:
                raise ValueError("MEMORY_MODEL=openai needs MEMORY_MODEL_URL")
            return OpenAICompatibleChatModel(
                self.settings.model_url,
                self.settings.model_id,
                api_key=self.settings.model_api_key,
                timeout_seconds=self.settings.model_timeout_seconds,
            )
        return None

    @cached_property
    def vector_index(self) -> VectorIndex | None:
        """OpenSearch whenever configured (the stream indexer and erasure need it even without an embedder);
        the exact index only with an embedder (it searches the vectors the embedder wrote)."""
        if self.settings.vector_index == "opensearch" and self.settings.opensearch_endpoint:
            from agentmem.vectors.opensearch import OpenSearchVectorIndex

            index = OpenSearchVectorIndex(
                self.settings.opensearch_endpoint,
                index=self.settings.opensearch_index,
                region_name=self.settings.aws_region,
                service=self.settings.opensearch_service,
                engine=self.settings.opensearch_engine,
                table=self.table,
            )
            index.max_entries = self.settings.max_entries
            return index
        if self.embedder is None:
            return None
        return self.table_index

    @cached_property
    def table_index(self) -> ExactVectorIndex:
        """The table's own search index, started from snapshots when they are configured."""
        from agentmem.vectors.exact import MAX_ENTRIES, ExactVectorIndex

        ask = self.ask_for_snapshot if self.snapshots is not None else None
        limit = self.settings.max_entries or MAX_ENTRIES
        return ExactVectorIndex(self.table, snapshots=self.snapshots, ask=ask, max_entries=limit)

    @cached_property
    def snapshots(self) -> SnapshotStore | None:
        """Where held search indexes are snapshotted (agentmem/search/snapshots.py), if anywhere."""
        from agentmem.search.snapshots import FileSnapshots, S3Snapshots

        if self.settings.snapshots == "files":
            return FileSnapshots(Path(self.settings.snapshot_dir or f"{self.settings.sqlite_path}.snapshots"))
        if self.settings.snapshots == "s3":
            assert self.settings.snapshot_bucket is not None
            return S3Snapshots(self.settings.snapshot_bucket, region_name=self.settings.aws_region)
        return None

    @cached_property
    def snapshotter(self) -> Snapshotter:
        """Writes a partition's snapshot from the table index of this process."""
        from agentmem.search import changes
        from agentmem.search.snapshots import Snapshotter

        assert self.snapshots is not None, "no snapshot store is configured (MEMORY_SNAPSHOTS)"

        def version_of(partition: str) -> tuple[str | None, int]:
            stats = changes.MEMORY.stats(self.table, partition)
            return stats.epoch, stats.version

        return Snapshotter(self.snapshots, version_of=version_of, encoded=self.table_index.snapshot)

    @cached_property
    def local_snapshots(self) -> LocalSnapshotter:
        from agentmem.search.snapshots import LocalSnapshotter

        return LocalSnapshotter(self.snapshotter)

    def ask_for_snapshot(self, partition: str) -> None:
        """A load read a partition whole, or caught up far past its snapshot: have a new one written, off
        the request path (the snapshot function's queue in the cloud, a background thread locally)."""
        from agentmem.search.snapshots import SqsSnapshotRequests

        if self.settings.snapshot_queue_url:
            SqsSnapshotRequests(self.settings.snapshot_queue_url, region_name=self.settings.aws_region).ask(partition)
        elif self.settings.snapshots == "files":
            self.local_snapshots.ask(partition)

    @property
    def external_vector_index(self) -> VectorIndex | None:
        """The index that holds copies of the vectors outside the table (OpenSearch), which erasure must
        empty on its own; None when the vectors live only on the entry items and go with them."""
        index = self.vector_index
        return index if index is not None and index.derived else None

    @cached_property
    def memory(self) -> MemoryService:
        from agentmem.memory.service import MemoryService

        return MemoryService(
            self.table,
            embedder=self.embedder,
            vector_index=self.vector_index or self.table_index,
            sessions=_SessionWatch(self),
        )

    # -- learning (docs/extraction.md) ----------------------------------------------------------------

    @cached_property
    def memories(self) -> AppMemories:
        from agentmem.extraction.config import AppMemories

        return AppMemories(self.table, clock=self.clock)

    @cached_property
    def learned_records(self) -> LearnedRecords:
        from agentmem.agentcore.learning import LearnedRecords

        return LearnedRecords(self.agentcore, self.memory)

    @cached_property
    def extraction(self) -> ExtractionService:
        from agentmem.extraction.service import ExtractionService
        from agentmem.tenancy.admission import EXTRACTION_TIER, ModelShare, TierLimits

        per_minute = self.settings.extraction_tokens_per_minute
        share = (
            ModelShare(
                self.table,
                "extraction",
                TierLimits({EXTRACTION_TIER: per_minute}),
                clock=self._epoch_seconds,
            )
            if per_minute is not None
            else None
        )
        return ExtractionService(
            self.table,
            self.memories,
            self.learned_records,
            self.graph,
            self.model,
            clock=self.clock,
            minute_share=share,
        )

    @cached_property
    def extraction_steps(self) -> Steps:
        """Extraction's steps as the cloud function runs them: later looks come back through SQS."""
        from agentmem.extraction.queue import SqsWaker
        from agentmem.extraction.runner import Steps

        if not self.settings.extraction_queue_url:
            raise ValueError("the extraction function needs MEMORY_EXTRACTION_QUEUE_URL")
        waker = SqsWaker(self.settings.extraction_queue_url, region_name=self.settings.aws_region)
        return Steps(self.extraction, self.table, waker)

    @cached_property
    def local_extraction(self) -> LocalRunner:
        """Extraction's steps in this process, in a background thread (the local server)."""
        from agentmem.extraction.runner import LocalRunner, Steps

        return LocalRunner(
            lambda waker: Steps(self.extraction, self.table, waker),
            self.table,
            background=self.background,
            clock_ms=lambda: int(self.clock().timestamp() * 1000),
        )

    @cached_property
    def memory_control(self) -> MemoryControl:
        from agentmem.agentcore.control import MemoryControl
        from agentmem.deletion.runners import start_erasure
        from agentmem.extraction.config import CACHE_SECONDS

        def status(user: UserRef, deletion_id: str) -> str:
            try:
                return str(self.deletion.status(user, deletion_id)["status"])
            except NotFound:
                return "FAILED"

        return MemoryControl(
            self.table,
            self.memories,
            model_id=self.settings.model_id if self.model is not None else None,
            erase=lambda user: start_erasure(self.deletion, self.deletion_runner, user).deletion_id,
            erasure_status=status,
            region=self.settings.aws_region,
            clock=self.clock,
            drain_seconds=self.settings.deletion_drain_seconds + CACHE_SECONDS,
        )

    @property
    def learns_locally(self) -> bool:
        """Extraction runs in this process: a model is configured and no queue takes the work elsewhere."""
        in_lambda = bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))
        return self.model is not None and not self.settings.extraction_queue_url and not in_lambda

    @cached_property
    def store(self) -> StoreService:
        from agentmem.store.service import StoreService

        return StoreService(self.table, self.memory)

    @cached_property
    def agentcore(self) -> AgentCoreService:
        from agentmem.agentcore.service import AgentCoreService

        return AgentCoreService(self.table, self.memory, self.idempotency, memories=self.memories)

    @cached_property
    def graph(self) -> GraphMemoryService:
        from agentmem.graph.service import GraphMemoryService

        return GraphMemoryService(self.table)

    @cached_property
    def idempotency(self) -> IdempotencyStore:
        from agentmem.idempotency import IdempotencyStore

        return IdempotencyStore(self.table, ttl_seconds=self.settings.idempotency_ttl_seconds)

    @cached_property
    def deletion(self) -> DeletionService:
        from agentmem.deletion.service import DeletionService

        # Vectors kept only on the entry items go with the entries; an external index is emptied by the
        # workflow's parallel branch.
        return DeletionService(
            self.table,
            receipt_key=self.settings.resolved_receipt_key(),
            vectors=self.external_vector_index,
            snapshots=self.snapshots,
            batch_size=self.settings.deletion_batch_size,
            drain_seconds=self.settings.deletion_drain_seconds,
        )

    @cached_property
    def deletion_runner(self) -> DeletionRunner:
        from agentmem.deletion import runners, steps

        if self.settings.deletion_runner == "stepfunctions" and self.settings.deletion_state_machine_arn:
            return runners.StepFunctionsRunner(
                self.settings.deletion_state_machine_arn, region_name=self.settings.aws_region
            )
        # Inside Lambda a background thread would freeze with the response: run the workflow inline there.
        return runners.LocalRunner(
            lambda event: steps.run_step(self.deletion, event),
            definition_path=self.settings.deletion_workflow_path,
            background=not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"),
        )

    def close(self, timeout: float = 30.0) -> bool:
        """Stop this process's background work, then close the table it reads (the local server's worker at
        exit, tests): erasures running in the background finish, the extraction thread ends after its step, the
        snapshot writer after what was asked; only then is the table closed, never under a thread that still
        reads it. Only parts already built are touched. False when a thread was still running at ``timeout``
        (the table is then left open)."""
        deadline = time.monotonic() + timeout
        parts = self.__dict__
        stopped = True
        runner = parts.get("deletion_runner")
        wait = getattr(runner, "wait", None)
        if wait is not None:
            stopped = wait(max(0.0, deadline - time.monotonic())) and stopped
        if "local_extraction" in parts:
            stopped = parts["local_extraction"].stop(max(0.0, deadline - time.monotonic())) and stopped
        if "local_snapshots" in parts:
            stopped = parts["local_snapshots"].close(max(0.0, deadline - time.monotonic())) and stopped
        close = getattr(parts.get("table"), "close", None)
        if stopped and close is not None:
            close()
        return stopped

    @cached_property
    def admission(self) -> Admission:
        """Each tenant's requests in flight, bounded by its tier (counted only when the settings name limits)."""
        from agentmem.tenancy.admission import Admission, TierLimits

        return Admission(self.table, TierLimits.parse(self.settings.in_flight_limits), clock=self._epoch_seconds)

    def _epoch_seconds(self) -> float:
        return self.clock().timestamp()

    @cached_property
    def tenants(self) -> TenantService:
        from agentmem.tenancy.keys import TenantService

        return TenantService(self.table)


class _SessionWatch:
    """What the memory service adds to a write into a session, and whom it tells after: extraction's pending
    row (only when a model is configured: otherwise nothing is built or read), and the local runner."""

    def __init__(self, container: Container) -> None:
        self._container = container

    def notes(self, scope: Scope, session: str) -> list[Item]:
        if self._container.model is None:
            return []
        return self._container.extraction.pending_items(scope, session)

    def written(self, scope: Scope, session: str) -> None:
        if self._container.learns_locally:
            self._container.local_extraction.notify(scope.partition, session)


_lock = threading.Lock()
_container: Container | None = None


def get_container() -> Container:
    global _container
    if _container is None:
        with _lock:
            if _container is None:
                _container = Container(get_settings())
    return _container


def set_container(container: Container | None) -> None:
    """Install a container (tests, the local server); None rebuilds from the environment on next use."""
    global _container
    get_settings.cache_clear()
    _container = container
