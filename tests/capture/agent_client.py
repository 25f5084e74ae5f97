"""A stand-in coding agent for `agentx capture ... -- python agent_client.py`: one multi-turn
tool-using conversation per API family, base URLs from the environment agentx sets."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from clients import run_anthropic, run_chat, run_responses

if __name__ == "__main__":
    n = run_anthropic(os.environ["ANTHROPIC_BASE_URL"], "sk-ant-api03-DONEWHENsecretAAAA")
    n += run_chat(os.environ["OPENAI_BASE_URL"], "sk-proj-DONEWHENsecretBBBB")
    n += run_responses(os.environ["OPENAI_BASE_URL"], "sk-proj-DONEWHENsecretBBBB")
    print(f"calls={n}")
