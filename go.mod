module github.com/vkcompute/vkc

go 1.26.8

require (
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/vulkan-go/vulkan v0.0.0-20221209234627-c0a353ae26c8 // indirect
)
