module reprieve.invalid/bench/noopgo

go 1.22
