module github.com/dynamoctl/dynamo-operator/tools/etcd

// Builds etcd from the Go module proxy; the server module's root is package main.
go 1.26.0

require go.etcd.io/etcd/server/v3 v3.6.16
