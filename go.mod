module github.com/finsync/finsync

go 1.26.8

require (
	github.com/google/uuid v1.6.0
	github.com/plaid/plaid-go/v20 v20.1.0
	github.com/shopspring/decimal v1.6.0
	github.com/sony/gobreaker/v2 v2.4.0
	github.com/stripe/stripe-go/v84 v84.4.1
	golang.org/x/time v0.16.0
)

require (
	github.com/golang/protobuf v1.5.2 // indirect
	golang.org/x/net v0.17.0 // indirect
	golang.org/x/oauth2 v0.0.0-20220822191816-0ebed06d0094 // indirect
	google.golang.org/appengine v1.6.7 // indirect
	google.golang.org/protobuf v1.28.1 // indirect
)
