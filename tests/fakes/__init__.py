"""Test doubles that speak real protocols (HTTP servers), for integration tests."""

from .openai_server import FakeOpenAIServer, RecordedRequest, Reply, embedding_for, unused_port

__all__ = ["FakeOpenAIServer", "RecordedRequest", "Reply", "embedding_for", "unused_port"]
