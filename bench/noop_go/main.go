// A do-nothing scheduler extender in Go's standard library: the floor any extender pays on
// this machine, with no Python in it (bench/e2e.py --floors; docs/benchmarks-e2e.md).
//
// It answers as bench/noop_extender.py does: filter passes every node it was sent,
// prioritize answers [] (no scores, the body read but not parsed), preempt answers the
// scheduler's own proposal (the victims' UIDs when it was sent whole pods). Under
// /scores/ (a urlPrefix ending in /scores), prioritize instead gives every node it was sent a
// score of 0: what a scheduler pays to read an answer with a score for every node.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
)

type filterArgs struct {
	Nodes     json.RawMessage
	NodeNames json.RawMessage
}

type hostPriority struct {
	Host  string
	Score int64
}

type filterResult struct {
	Nodes                      json.RawMessage
	NodeNames                  json.RawMessage
	FailedNodes                map[string]string
	FailedAndUnresolvableNodes map[string]string
	Error                      string
}

type preemptArgs struct {
	NodeNameToVictims map[string]struct {
		Pods []struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
		}
		NumPDBViolations int64
	}
	NodeNameToMetaVictims json.RawMessage
}

type metaPod struct{ UID string }

type metaVictims struct {
	Pods             []metaPod
	NumPDBViolations int64
}

func answer(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(body); err != nil {
		log.Print(err)
	}
}

func main() {
	bind := flag.String("bind", "127.0.0.1:0", "host:port to listen on")
	flag.Parse()
	http.HandleFunc("/scores/prioritize", func(w http.ResponseWriter, r *http.Request) {
		var args struct{ NodeNames []string }
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		scores := make([]hostPriority, len(args.NodeNames))
		for i, name := range args.NodeNames {
			scores[i] = hostPriority{name, 0}
		}
		answer(w, scores)
	})
	filter := func(w http.ResponseWriter, r *http.Request) {
		var args filterArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w, filterResult{args.Nodes, args.NodeNames, map[string]string{}, map[string]string{}, ""})
	}
	http.HandleFunc("/filter", filter)
	http.HandleFunc("/scores/filter", filter)
	http.HandleFunc("/prioritize", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w, []struct{}{})
	})
	preempt := func(w http.ResponseWriter, r *http.Request) {
		var args preemptArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if sent := string(args.NodeNameToMetaVictims); (sent == "" || sent == "null") && args.NodeNameToVictims != nil { // nodeCacheCapable: false
			meta := make(map[string]metaVictims, len(args.NodeNameToVictims))
			for node, victims := range args.NodeNameToVictims {
				pods := make([]metaPod, len(victims.Pods))
				for i, pod := range victims.Pods {
					pods[i] = metaPod{pod.Metadata.UID}
				}
				meta[node] = metaVictims{pods, victims.NumPDBViolations}
			}
			answer(w, map[string]any{"NodeNameToMetaVictims": meta})
			return
		}
		answer(w, map[string]json.RawMessage{"NodeNameToMetaVictims": args.NodeNameToMetaVictims})
	}
	http.HandleFunc("/preempt", preempt)
	http.HandleFunc("/scores/preempt", preempt)
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	log.Fatal(http.ListenAndServe(*bind, nil))
}
