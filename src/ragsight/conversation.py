"""Conversations (kept for ``from ragsight.conversation import ...``; they live in
:mod:`ragsight.dataset`)."""

from .dataset import ROLES, Conversation, ToolCall, Turn

__all__ = ["ROLES", "Conversation", "ToolCall", "Turn"]
