"""Real English prompts for the real generative model, written for this repo (no dataset).

MLPerf's llama3.1-8b prompts (CNN/DailyMail articles, 13,368 samples) are not reachable
offline, so the real model is asked these: short instructions of the kind an assistant
answers, of varied lengths. CHATML wraps one in the chat format SmolLM2-Instruct was tuned on.
"""

from __future__ import annotations

from typing import Final

CHATML: Final = (
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\n<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"
)

TEXTS: Final[tuple[str, ...]] = (
    "Write one sentence about the ocean.",
    "Explain in two sentences why the sky is blue.",
    "Give three tips for staying focused while studying.",
    "What is the capital of France, and what is it known for?",
    "Describe a cat to someone who has never seen one.",
    "Summarize the water cycle for a ten-year-old.",
    "Write a short poem about autumn leaves.",
    "List four fruits that are rich in vitamin C.",
    "Why do we need sleep? Answer briefly.",
    "Suggest a name for a friendly robot and explain the choice.",
    "How does a bicycle stay upright when it moves?",
    "Write a polite email asking a colleague to review a report by Friday.",
    "What are the main differences between a lake and a river?",
    "Explain what a computer program is in simple words.",
    "Give a recipe idea for a quick vegetarian dinner.",
    "Describe the sound of rain on a tin roof.",
)
