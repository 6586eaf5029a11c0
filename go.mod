module github.com/finsync/finsync

go 1.26.8

require (
	github.com/google/uuid v1.6.0
	github.com/shopspring/decimal v1.6.0
)

require (
	github.com/getkin/kin-openapi v0.152.0
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/oasdiff/yaml v0.1.1 // indirect
	github.com/oasdiff/yaml3 v0.0.14 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/text v0.14.0 // indirect
)
