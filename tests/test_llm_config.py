"""Role settings: env > toml per level, role before general, OpenAI fallback, local server last."""

from __future__ import annotations

import logging

import pytest

from skillforge.errors import ConfigError, LLMNotConfigured
from skillforge.llm.config import chat_model, read_toml, resolve, resolve_all
from skillforge.state.llm import Role


def test_precedence_role_env_then_toml_then_general():
    toml = {"model": "toml-general", "judge": {"model": "toml-judge", "timeout": 5}}
    env = {"SKILLFORGE_LLM_MODEL": "env-general", "SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:9/v1",
           "OPENAI_MODEL": "openai-model", "OPENAI_API_KEY": "sk-openai"}
    judge = resolve(Role.JUDGE, env=env, toml=toml)
    assert judge.model == "toml-judge" and judge.timeout == 5.0 and judge.api_key == "sk-openai"
    assert resolve(Role.JUDGE, env={**env, "SKILLFORGE_JUDGE_MODEL": "env-judge"}, toml=toml).model == "env-judge"
    assert resolve(Role.ROUTER, env=env, toml=toml).model == "env-general"
    assert resolve(Role.ROUTER, env={"OPENAI_MODEL": "o"}, toml=toml).model == "toml-general"
    assert resolve(Role.ROUTER, env={"OPENAI_MODEL": "o", "OPENAI_BASE_URL": "http://x/v1"}).base_url == "http://x/v1"


def test_defaults_and_numbers_from_env():
    cfg = resolve(Role.PROPOSER, env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_PROPOSER_MAX_TOKENS": "256",
                                      "SKILLFORGE_LLM_PRICE_IN": "0.15", "SKILLFORGE_LLM_PRICE_OUT": "0.6"})
    assert (cfg.max_tokens, cfg.price_in, cfg.price_out, cfg.max_retries, cfg.temperature) == (256, 0.15, 0.6, 2, 0.0)
    with pytest.raises(ConfigError, match="max_tokens"):
        resolve(Role.ROUTER, env={"SKILLFORGE_LLM_MAX_TOKENS": "lots"})
    with pytest.raises(ConfigError, match="timeout"):
        resolve(Role.ROUTER, toml={"timeout": -1})
    with pytest.raises(ConfigError):
        resolve(Role.ROUTER, toml={"router": "not a table"})


@pytest.mark.parametrize("key,value", [("CONTEXT_TOKENS", "nan"), ("CONTEXT_TOKENS", "inf"), ("MAX_TOKENS", "nan"),
                                       ("MAX_RETRIES", "nan"), ("TIMEOUT", "nan"), ("TEMPERATURE", "nan")])
def test_a_number_that_is_not_finite_is_a_config_error(key, value):
    """The QA pass: nan passed `< 0`, then int() raised (exit 70), or the HTTP client refused it and
    the endpoint was blamed."""
    with pytest.raises(ConfigError, match=f"{key.lower()} must be a finite number"):
        resolve(Role.ROUTER, env={"SKILLFORGE_LLM_MODEL": "m", f"SKILLFORGE_LLM_{key}": value})


@pytest.mark.parametrize("url", ["http://[::1", "http://x:abc/", "ftp://x", "nonsense", "http://:80/v1"])
def test_a_base_url_that_is_not_an_http_url_is_a_config_error(url):
    with pytest.raises(ConfigError, match="base_url"):
        resolve(Role.ROUTER, env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_LLM_BASE_URL": url})
    assert resolve(Role.ROUTER, env={"SKILLFORGE_LLM_BASE_URL": "http://[::1]:8080/v1"}).base_url


def test_not_configured_then_local_server():
    cfg = resolve(Role.ROUTER, env={})
    assert not cfg.configured and cfg.source == "not configured"
    with pytest.raises(LLMNotConfigured, match="skillforge llm serve"):
        chat_model(cfg)
    local = resolve(Role.ROUTER, env={}, local=("http://127.0.0.1:8123/v1", "qwen"))
    assert (local.base_url, local.model, local.source, local.is_local) == ("http://127.0.0.1:8123/v1", "qwen", "local server", True)
    # a configured endpoint wins over the local server
    assert resolve(Role.ROUTER, env={"SKILLFORGE_LLM_MODEL": "m"}, local=("http://127.0.0.1:1/v1", "q")).model == "m"


def test_api_key_never_in_repr():
    cfg = resolve(Role.JUDGE, env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_LLM_API_KEY": "sk-secret-123"})
    assert "sk-secret" not in repr(cfg)


def test_judge_equal_to_proposer_warns(caplog):
    with caplog.at_level(logging.WARNING):
        resolve_all(env={"SKILLFORGE_LLM_MODEL": "same"})
    assert "judge and proposer resolve to the same model" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        resolve_all(env={"SKILLFORGE_LLM_MODEL": "same", "SKILLFORGE_JUDGE_MODEL": "other"})
    assert "judge and proposer" not in caplog.text
    with caplog.at_level(logging.WARNING):
        resolve_all(env={"SKILLFORGE_LLM_MODEL": "same"}, grading=False)  # routing: no judge involved
    assert "judge and proposer" not in caplog.text


def test_workspace_toml(tmp_path):
    (tmp_path / "skillforge.toml").write_text('[llm]\nmodel = "m"\nbase_url = "http://127.0.0.1:1/v1"\n'
                                              '[llm.judge]\nmodel = "judge-m"\n', encoding="utf-8")
    toml = read_toml(tmp_path)
    assert resolve(Role.JUDGE, env={}, toml=toml).model == "judge-m"
    assert resolve(Role.ROUTER, env={}, toml=toml).base_url == "http://127.0.0.1:1/v1"
    (tmp_path / "skillforge.toml").write_text("[llm\nbroken", encoding="utf-8")
    with pytest.raises(ConfigError, match="skillforge.toml"):
        read_toml(tmp_path)
    assert read_toml(tmp_path / "nowhere") == {}


def test_chat_model_sends_max_tokens_in_extra_body():
    model = chat_model(resolve(Role.ROUTER, env={"SKILLFORGE_LLM_MODEL": "m", "SKILLFORGE_LLM_MAX_TOKENS": "77",
                                                 "SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:1/v1"}))
    assert model.extra_body == {"max_tokens": 77} and model.max_tokens is None


@pytest.mark.parametrize(("judge_url", "proposer_url"), [
    ("http://localhost:8772/v1", "http://127.0.0.1:8772/v1"),  # QA: this pair published an L1 unreviewed
    ("http://127.0.0.1:8772/v1/", "http://[::1]:8772/v1"),
    ("HTTP://LocalHost:8772/v1", "http://0.0.0.0:8772/v1"),
    ("https://api.example.com/v1", "https://api.example.com:443/v1/"),
    ("http://127.1:8772/v1", "http://127.0.0.1:8772/v1"),  # QA pass 4: inet_aton shorthands,
    ("http://2130706433:8772/v1", "http://localhost:8772/v1"),  # the integer form,
    ("http://[::ffff:127.0.0.1]:8772/v1", "http://127.0.0.1:8772/v1"),  # IPv4-mapped IPv6,
    ("http://127.0.0.1:8772//v1", "http://127.0.0.1:8772/v1"),  # a doubled slash
])
def test_judge_on_another_name_of_the_proposers_server_is_the_same_model(judge_url, proposer_url, caplog):
    env = {"SKILLFORGE_JUDGE_BASE_URL": judge_url, "SKILLFORGE_JUDGE_MODEL": "prop",
           "SKILLFORGE_PROPOSER_BASE_URL": proposer_url, "SKILLFORGE_PROPOSER_MODEL": "prop"}
    with caplog.at_level(logging.WARNING):
        configs = resolve_all(env=env)
    assert configs[Role.JUDGE].model_key == configs[Role.PROPOSER].model_key
    assert "judge and proposer resolve to the same model" in caplog.text


def test_a_model_name_with_a_trailing_space_is_the_same_model(caplog):
    env = {"SKILLFORGE_JUDGE_MODEL": "prop ", "SKILLFORGE_PROPOSER_MODEL": "prop",
           "SKILLFORGE_LLM_BASE_URL": "http://127.0.0.1:8772/v1"}
    with caplog.at_level(logging.WARNING):
        configs = resolve_all(env=env)
    assert configs[Role.JUDGE].model_key == configs[Role.PROPOSER].model_key
    assert "judge and proposer resolve to the same model" in caplog.text


@pytest.mark.parametrize(("a", "b"), [
    ("http://127.0.0.1:8772/v1", "http://127.0.0.1:8773/v1"),  # another port: another server
    ("http://localhost:8772/v1", "http://localhost:8772/v2"),
    ("http://api.example.com/v1", "https://api.example.com/v1"),
    ("http://10.0.0.5:80/v1", "http://10.0.0.6/v1"),
    ("http://10.1:8772/v1", "http://127.1:8772/v1"),  # a shorthand that is not loopback
])
def test_other_servers_are_other_keys(a, b):
    from skillforge.rules.servers import server_key

    assert server_key(a) != server_key(b)
    assert server_key(None) == server_key("https://api.openai.com/v1/") == server_key("https://API.openai.com:443/v1")
    assert server_key("http://[::1") == "http://[::1"  # unparseable: kept as written, never an exception
