// The console's entry point, bundled by scripts/build-console.ts.
import { render } from 'preact';
import { App } from './app.tsx';
import './console.css';

render(<App />, document.getElementById('app')!);
