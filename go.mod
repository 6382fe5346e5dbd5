module github.com/moora-go/moora

go 1.26
