import { runService } from '@cairn/runtime';
import { gatewayService } from './service.js';

runService(gatewayService());
