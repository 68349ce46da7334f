"""What several test modules share, one topic a module; test modules import from here, never
from each other.

http_server  a scripted HTTP server on 127.0.0.1 that records every request
chat         OpenAI chat-completion replies on top of it (a judge's verdicts, a 401)
raw_tcp      a TCP server that answers with byte scripts (replies cut short, stalls)
raw_h2       an HTTP/2 client that leaves streams unfinished (gRPC limits)
serve        `agentscore serve` as a subprocess, fed and read over OTLP
serve_scorers, new_scorers
             scorers `agentscore serve --scorers tests.support.<module>:evals` loads
seeds        the reference documents' worked examples with their correct verdicts
relevancy_set
             a labelled set for answer relevancy (`python -m tests.support.relevancy_set`)
"""
