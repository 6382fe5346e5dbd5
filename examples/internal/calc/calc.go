// Package calc evaluates arithmetic expressions exactly, for the examples'
// calculator tools: numbers, + - * / and parentheses, as Go evaluates
// constant expressions, so that 1/3*3 is 1. Every number and result is
// bounded, so that no expression costs much.
package calc

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"math/big"
	"strconv"
	"strings"
)

// maxExpression bounds what Calculate reads, and maxDigits the size of the
// numbers it computes: a few operations can make a number huge (9e999 *
// 9e999 …), and each would then cost more.
const (
	maxExpression = 1000
	maxLiteral    = 100
	maxDigits     = 1000
)

// Calculate evaluates an arithmetic expression exactly and returns its
// value, as a decimal when it has one of at most 20 digits after the point,
// else as a fraction.
func Calculate(expr string) (string, error) {
	if len(expr) > maxExpression {
		return "", fmt.Errorf("the expression is longer than %d characters", maxExpression)
	}
	x, err := parser.ParseExpr(expr)
	if err != nil {
		return "", fmt.Errorf("not an arithmetic expression: %q", expr)
	}
	v, err := eval(x)
	if err != nil {
		return "", err
	}
	num, _ := new(big.Int).SetString(constant.Num(v).ExactString(), 10)
	den, _ := new(big.Int).SetString(constant.Denom(v).ExactString(), 10)
	return decimal(new(big.Rat).SetFrac(num, den)), nil
}

// decimal writes r exactly: as an integer, as a decimal when it has a
// finite one (its denominator has no prime factor but 2 and 5), else as a
// fraction.
func decimal(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	d := new(big.Int).Set(r.Denom())
	digits := 0
	for _, p := range []int64{2, 5} {
		n, m, q := 0, new(big.Int), big.NewInt(p)
		for {
			quo, rem := new(big.Int).QuoRem(d, q, m)
			if rem.Sign() != 0 {
				break
			}
			d, n = quo, n+1
		}
		digits = max(digits, n)
	}
	if d.Cmp(big.NewInt(1)) == 0 {
		return r.FloatString(digits)
	}
	return r.String()
}

func eval(x ast.Expr) (constant.Value, error) {
	switch x := x.(type) {
	case *ast.BasicLit:
		if (x.Kind != token.INT && x.Kind != token.FLOAT) || strings.Trim(x.Value, "0123456789.eE+-") != "" {
			return nil, fmt.Errorf("%s is not a decimal number", x.Value)
		}
		if len(x.Value) > maxLiteral {
			return nil, fmt.Errorf("a number is longer than %d characters", maxLiteral)
		}
		if f, err := strconv.ParseFloat(x.Value, 64); err != nil || f > 1e300 || (f != 0 && f < 1e-300) {
			return nil, fmt.Errorf("%s is out of range", x.Value) // its exponent could make it cost anything
		}
		v := constant.MakeFromLiteral(x.Value, x.Kind, 0)
		if v.Kind() == constant.Unknown {
			return nil, fmt.Errorf("%s is not a number", x.Value)
		}
		return constant.ToFloat(v), nil
	case *ast.ParenExpr:
		return eval(x.X)
	case *ast.UnaryExpr:
		v, err := eval(x.X)
		if err != nil {
			return nil, err
		}
		if x.Op != token.ADD && x.Op != token.SUB {
			return nil, fmt.Errorf("%s is not an arithmetic operator", x.Op)
		}
		return constant.UnaryOp(x.Op, v, 0), nil
	case *ast.BinaryExpr:
		a, err := eval(x.X)
		if err != nil {
			return nil, err
		}
		b, err := eval(x.Y)
		if err != nil {
			return nil, err
		}
		switch x.Op {
		case token.ADD, token.SUB, token.MUL:
		case token.QUO:
			if constant.Sign(b) == 0 {
				return nil, errors.New("division by zero")
			}
		default:
			return nil, fmt.Errorf("%s is not an arithmetic operator", x.Op)
		}
		v := constant.BinaryOp(a, x.Op, b)
		if len(constant.Num(v).ExactString())+len(constant.Denom(v).ExactString()) > maxDigits {
			return nil, errors.New("the result is too large")
		}
		return v, nil
	}
	return nil, errors.New("only numbers, + - * / and parentheses are allowed")
}
