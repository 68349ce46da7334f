"""What several test modules share, one topic a module. Test modules import from here, never
from each other; conftest.py keeps only fixtures.

http_server    a scripted HTTP server on 127.0.0.1 that records every request (the judge,
               OTLP receiver, sink backend and redirecting server of every test)
chat           OpenAI chat-completion replies for it (a judge's verdicts, a 401 quoting the key)
raw_tcp        a TCP server answering with byte scripts (bodies cut short, stalls, drips)
raw_h2         an HTTP/2 client that leaves streams unfinished (the gRPC limits)
serve          `agentscore serve` as a subprocess, fed and read over OTLP; SERVE_SCORERS
serve_scorers  the scorers every test service loads (`--scorers SERVE_SCORERS`)
new_scorers    the eight scorers of issue 21 (`--scorers tests.support.new_scorers:evals`)
grpc_export    one raw OTLP export over gRPC
tls            a self-signed certificate for 127.0.0.1
otel           typed reads of what the SDK recorded (the `otel` fixture's Otel)
agent          a support agent's scripted model, tool and judge
cascade        a cascade judge with a scripted LLM stage, and the answer it is tested on
pipeline       an application's TracerProvider with the scoring span processor
sinks          a scored result and what a score backend was posted
eval_cli       `agentscore eval` records, results and a subprocess environment
seeds          the reference documents' worked examples with their correct verdicts
relevancy_set  a labelled set for answer relevancy (`python -m tests.support.relevancy_set`)
"""
