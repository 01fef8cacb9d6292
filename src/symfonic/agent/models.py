"""Resolving ``"provider:model"`` strings to langchain chat models, through optional extras."""

from __future__ import annotations

import importlib
from typing import Any

from langchain_core.language_models import BaseChatModel

from symfonic.core.contracts.errors import ConfigurationError

_PROVIDERS: dict[str, tuple[str, str, str]] = {
    # provider: (module, class, extra)
    "openai": ("langchain_openai", "ChatOpenAI", "openai"),
    "anthropic": ("langchain_anthropic", "ChatAnthropic", "anthropic"),
    "ollama": ("langchain_ollama", "ChatOllama", "ollama"),
}


def resolve_model(model: BaseChatModel | str, **options: Any) -> BaseChatModel:
    """The chat model ``model`` names; OpenAI-compatible servers (vLLM) go through
    ``openai:`` with ``base_url`` in ``options`` or ``OPENAI_BASE_URL``."""
    if isinstance(model, BaseChatModel):
        return model
    provider, sep, name = model.partition(":")
    if not sep or not name:
        raise ConfigurationError(f"a model string is 'provider:model', got {model!r}")
    if provider not in _PROVIDERS:
        raise ConfigurationError(
            f"unknown model provider {provider!r}; known: {', '.join(sorted(_PROVIDERS))}"
        )
    module_name, class_name, extra = _PROVIDERS[provider]
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigurationError(
            f"the {provider} models need an extra: in the symfonic clone, "
            f"pip install -e '.[{extra}]'"
        ) from error
    chat_model: BaseChatModel = getattr(module, class_name)(model=name, **options)
    return chat_model
