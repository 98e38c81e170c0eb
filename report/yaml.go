package report

import (
	"encoding/json"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// YAML writes v as block-style YAML with the keys, names and order of its
// JSON form, so that -o yaml and -o json describe one schema.
func YAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	blockStyle(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return enc.Close()
}

// blockStyle undoes the flow style that JSON text decodes to, keeping
// strings quoted where YAML would read them as another type.
func blockStyle(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = 0
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		n.Style = 0 // the encoder quotes a string that would read as a number, bool or null
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}
