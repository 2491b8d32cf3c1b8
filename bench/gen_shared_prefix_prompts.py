#!/usr/bin/env python3
"""Writes N prompts (one per line) sharing a ~1,000-token prefix, for
`folio batch`: a fixed paragraph repeated, then a distinct question.

  python3 bench/gen_shared_prefix_prompts.py > /tmp/shared_prefix_prompts.txt
"""
import sys

PARAGRAPH = ("The river valley was settled early, because its soil was rich and its water steady. "
             "Farmers terraced the slopes and built mills along the banks, and towns grew where roads "
             "crossed the river. Over centuries the valley became a corridor for trade and ideas. ")
QUESTIONS = [
    "Why was the valley settled early?", "What did farmers build?", "Where did towns grow?",
    "What did the valley become?", "Name one crop that might grow there.", "Who used the mills?",
    "How did trade reach the valley?", "What happens when the river floods?",
    "Why were terraces useful?", "What ideas travelled along the corridor?",
    "Which season brings the most water?", "How old are the oldest towns?",
    "What roads crossed the river?", "How did the mills work?", "Who governed the valley?",
    "What changed in the last century?",
]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    prefix = PARAGRAPH * 20  # ~1,000 tokens with the Gemma 3 vocabulary
    for i in range(n):
        print(f"{prefix}Question: {QUESTIONS[i % len(QUESTIONS)]}")


if __name__ == "__main__":
    main()
