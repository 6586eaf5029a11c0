module github.com/finsync/finsync

go 1.26.8

require (
	github.com/google/uuid v1.6.0
	github.com/shopspring/decimal v1.6.0
	github.com/sony/gobreaker/v2 v2.4.0
	golang.org/x/time v0.16.0
)
