"""The runtime verifier: replays h2dlint's fixes with torch and checks they keep behaviour and stop stalling.

Only this package imports torch, and only when a check runs; `h2dlint check` never loads it.
"""
